import { describe, it, expect } from 'vitest';
import pino from 'pino';
import { getCountries, getExampleNumber, type CountryCode } from 'libphonenumber-js/max';
import mobileExamples from 'libphonenumber-js/examples.mobile.json';
import { parseConfig } from '../../src/config/config.ts';
import type { ExecContext } from '../../src/products/kit/product-contract.ts';
import { phoneProduct, phoneResult, type PhoneInput, type PhoneResult } from '../../src/products/phone/index.ts';
import { buildEnvelope } from '../../src/contract/envelope.ts';

const config = parseConfig({
  DATABASE_URL: 'mysql://x',
  REDIS_URL: 'redis://x',
  KEY_PEPPER: 'x'.repeat(32),
  CURSOR_SECRET: 'y'.repeat(32),
  WEBHOOK_SECRET_KEY: 'w'.repeat(32),
});

function ctx(): ExecContext {
  return {
    runtime: { config, log: pino({ level: 'silent' }), services: {} },
    requestId: 'req_test',
    signal: new AbortController().signal,
  };
}

function parseOk(body: unknown): PhoneInput {
  const r = phoneProduct.input.safeParse(body);
  if (!r.success) throw new Error(`expected ${JSON.stringify(body)} to pass: ${JSON.stringify(r.error.issues)}`);
  return r.data;
}

async function lookup(body: unknown): Promise<PhoneResult> {
  const out = await phoneProduct.execute!(parseOk(body), ctx());
  expect(out.lanes).toEqual([expect.objectContaining({ lane: 'numbering_plan', required: true, status: 'completed' })]);
  expect(phoneResult.safeParse(out.result).success).toBe(true);
  return out.result;
}

function issuePaths(body: unknown): string[] {
  const r = phoneProduct.input.safeParse(body);
  expect(r.success).toBe(false);
  return r.success ? [] : r.error.issues.map((i) => i.path.join('.'));
}

// Every example set libphonenumber-js ships. Only mobile examples are published in the package
// today; add others here if they appear.
const exampleSets: Record<string, Parameters<typeof getExampleNumber>[1]> = { mobile: mobileExamples };

describe('lookup.phone.v1 example numbers of every region', () => {
  const regions = getCountries();

  it('has examples for every region the library knows', () => {
    expect(regions.length).toBeGreaterThan(240);
    for (const region of regions) expect(getExampleNumber(region, mobileExamples), region).toBeDefined();
  });

  for (const [setName, examples] of Object.entries(exampleSets)) {
    for (const region of regions) {
      it(`${setName} example of ${region}: parses with its region and from E.164, is valid, formats round-trip`, async () => {
        const example = getExampleNumber(region as CountryCode, examples);
        expect(example, region).toBeDefined();
        const e164 = example!.number;

        const national = example!.formatNational();
        const fromNational = await lookup({ value: national, defaultRegion: region });
        expect(fromNational.isValid, national).toBe(true);
        expect(fromNational.isPossible, national).toBe(true);
        expect(fromNational.e164, national).toBe(e164);
        expect(fromNational.invalidReason).toBeNull();

        // Lower-case region accepted and normalised.
        const lower = await lookup({ value: example!.nationalNumber, defaultRegion: region.toLowerCase() });
        expect(lower.e164).toBe(e164);

        const fromE164 = await lookup({ value: e164 });
        expect(fromE164.isValid, e164).toBe(true);
        expect(fromE164.e164).toBe(e164);
        expect(fromE164.possibleRegions, e164).toContain(region);
        expect(fromE164.countryCallingCode).toBe(example!.countryCallingCode);
        expect(fromE164.type, e164).not.toBe('unknown');
        expect(fromE164.rfc3966).toBe(`tel:${e164}`);

        // The formats this lookup returns read back to the same number.
        expect((await lookup({ value: fromE164.international! })).e164, 'international').toBe(e164);
        expect(
          (await lookup({ value: fromE164.national!, defaultRegion: fromE164.region ?? region })).e164,
          'national',
        ).toBe(e164);
      });
    }
  }
});

describe('lookup.phone.v1 answers', () => {
  it('reads a US number fully', async () => {
    const r = await lookup({ value: '+1 213 373 4253' });
    expect(r).toMatchObject({
      e164: '+12133734253',
      international: '+1 213 373 4253',
      national: '(213) 373-4253',
      rfc3966: 'tel:+12133734253',
      countryCallingCode: '1',
      region: 'US',
      nonGeographic: false,
      possibleRegions: ['US'],
      type: 'fixed_line_or_mobile',
      isPossible: true,
      isValid: true,
      invalidReason: null,
    });
  });

  it('tells a GB fixed line and an Isle of Man mobile apart under +44', async () => {
    expect(await lookup({ value: '020 7946 0958', defaultRegion: 'GB' })).toMatchObject({
      region: 'GB',
      type: 'fixed_line',
      isValid: true,
    });
    expect(await lookup({ value: '+44 7624 369230' })).toMatchObject({
      region: 'IM',
      type: 'mobile',
      isValid: true,
      possibleRegions: ['IM'],
    });
  });

  it('lists every NANP region a shared toll-free number is valid for', async () => {
    const r = await lookup({ value: '+1 800 555 0199' });
    expect(r.type).toBe('toll_free');
    expect(r.possibleRegions).toEqual(expect.arrayContaining(['US', 'CA']));
  });

  it('keeps an extension apart from the E.164 number', async () => {
    const r = await lookup({ value: '+1 213 373 4253 ext. 12' });
    expect(r.e164).toBe('+12133734253');
    expect(r.extension).toBe('12');
    expect(r.rfc3966).toBe('tel:+12133734253;ext=12');
  });

  it('reads a national number with a national prefix (RU 8 800…)', async () => {
    expect(await lookup({ value: '8 (800) 555-35-35', defaultRegion: 'RU' })).toMatchObject({
      e164: '+78005553535',
      type: 'toll_free',
      isValid: true,
    });
  });

  it('reads an international dialling prefix when a region is given', async () => {
    expect((await lookup({ value: '011 44 20 7946 0958', defaultRegion: 'US' })).e164).toBe('+442079460958');
  });
});

describe('lookup.phone.v1 non-geographic numbers', () => {
  const cases: [string, string, PhoneResult['type']][] = [
    ['+800 1234 5678', '800', 'toll_free'],
    ['+808 1234 5678', '808', 'shared_cost'],
    ['+870 301 234 567', '870', 'mobile'],
    ['+881 6 1234 5678', '881', 'mobile'],
    ['+882 342 1234', '882', 'mobile'],
    ['+883 5100 1234 5678', '883', 'voip'],
    ['+888 123 45678901', '888', 'uan'],
    ['+979 1 2345 6789', '979', 'premium_rate'],
  ];
  for (const [value, code, type] of cases) {
    it(`${value} is valid with region null`, async () => {
      const r = await lookup({ value });
      expect(r).toMatchObject({
        countryCallingCode: code,
        region: null,
        nonGeographic: true,
        isValid: true,
        type,
        possibleRegions: [],
      });
      expect(r.e164).toBe(`+${value.replace(/\D/g, '')}`);
      expect((await lookup({ value: r.international! })).e164).toBe(r.e164);
    });
  }
});

describe('lookup.phone.v1 invalid numbers are answers, not errors', () => {
  it('too short', async () => {
    expect(await lookup({ value: '12', defaultRegion: 'US' })).toMatchObject({
      isPossible: false,
      isValid: false,
      invalidReason: 'too_short',
      type: 'unknown',
    });
    expect(await lookup({ value: '+1 2' })).toMatchObject({ isValid: false, invalidReason: 'too_short', e164: null });
  });

  it('too long', async () => {
    expect(await lookup({ value: '1234567890123456789', defaultRegion: 'US' })).toMatchObject({
      isValid: false,
      invalidReason: 'too_long',
    });
    expect(await lookup({ value: '+49 30 123456789012345' })).toMatchObject({
      isPossible: false,
      isValid: false,
      invalidReason: 'too_long',
    });
  });

  it('invalid country calling code', async () => {
    expect(await lookup({ value: '+999 1234 5678' })).toMatchObject({
      isValid: false,
      isPossible: false,
      invalidReason: 'invalid_country',
      countryCallingCode: null,
      e164: null,
    });
  });

  it('not a number at all', async () => {
    for (const value of ['abc', 'call me maybe', '+', '   ', '☎']) {
      const r = await lookup({ value, defaultRegion: 'US' });
      expect(r, value).toMatchObject({
        isValid: false,
        isPossible: false,
        invalidReason: 'not_a_number',
        e164: null,
        region: null,
        type: 'unknown',
      });
    }
  });

  it('possible length but no allocated range', async () => {
    const r = await lookup({ value: '+1 555 555 5555' });
    expect(r).toMatchObject({
      isPossible: true,
      isValid: false,
      invalidReason: 'invalid_for_region',
      region: null,
      type: 'unknown',
    });
    expect(r.possibleRegions).toContain('US');
  });

  it('envelope is completed (the lane ran) even when the number is not valid', async () => {
    const input = parseOk({ value: 'abc', defaultRegion: 'US' });
    const env = buildEnvelope(phoneProduct, input, await phoneProduct.execute!(input, ctx()), 'req_test');
    expect(env.status).toBe('completed');
    expect(env.input).toEqual({ value: 'abc', defaultRegion: 'US' });
  });
});

describe('lookup.phone.v1 outcome shape', () => {
  it('cites the library version and always states what a numbering plan cannot tell', async () => {
    const out = await phoneProduct.execute!(parseOk({ value: '+44 20 7946 0958' }), ctx());
    expect(out.sources).toEqual([
      { source: 'libphonenumber_metadata', version: expect.stringMatching(/^libphonenumber-js@\d+\.\d+\.\d+/) },
    ]);
    const codes = out.limitations.map((l) => l.code);
    expect(codes).toEqual(
      expect.arrayContaining(['carrier_not_determined', 'porting_not_determined', 'line_status_not_determined']),
    );
    expect(phoneProduct.readiness(ctx().runtime)).toEqual({ numbering_plan: 'ready' });
    expect(phoneProduct.echo!(parseOk({ value: '2133734253', defaultRegion: 'us' }))).toEqual({
      value: '2133734253',
      defaultRegion: 'US',
    });
  });
});

describe('lookup.phone.v1 input schema', () => {
  it('requires defaultRegion when the value has no "+"', () => {
    expect(issuePaths({ value: '2133734253' })).toEqual(['defaultRegion']);
    expect(issuePaths({ value: '00 44 20 7946 0958' })).toEqual(['defaultRegion']);
    expect(phoneProduct.input.safeParse({ value: '+12133734253' }).success).toBe(true);
  });

  it('rejects a region code the library does not know', () => {
    expect(issuePaths({ value: '+12133734253', defaultRegion: 'ZZ' })).toEqual(['defaultRegion']);
    expect(issuePaths({ value: '2133734253', defaultRegion: 'USA' })).toEqual(['defaultRegion']);
    expect(issuePaths({ value: '2133734253', defaultRegion: '' })).toEqual(['defaultRegion']);
    expect(issuePaths({ value: '2133734253', defaultRegion: '001' })).toEqual(['defaultRegion']);
    expect(issuePaths({ value: '2133734253', defaultRegion: 12 })).toEqual(['defaultRegion']);
  });

  it('accepts a lower-case region and returns it upper-case', () => {
    expect(parseOk({ value: '2133734253', defaultRegion: 'us' }).defaultRegion).toBe('US');
    expect(parseOk({ value: '2133734253', defaultRegion: 'gB' }).defaultRegion).toBe('GB');
  });

  it('rejects wrong types, empty and over-long values on value', () => {
    expect(issuePaths({ value: 'x'.repeat(65), defaultRegion: 'US' })).toEqual(['value']);
    expect(issuePaths({ value: '', defaultRegion: 'US' })).toEqual(['value']);
    expect(issuePaths({ value: 12133734253, defaultRegion: 'US' })).toEqual(['value']);
    expect(issuePaths({ defaultRegion: 'US' })).toEqual(['value']);
  });

  it('rejects unknown fields', () => {
    expect(phoneProduct.input.safeParse({ value: '+12133734253', country: 'US' }).success).toBe(false);
  });
});
