// Everything lookup.phone.v1 asks of libphonenumber-js (full "max" metadata): parsing, validity,
// type, formats and the regions that share a calling code. No network, no carrier data.
import { createRequire } from 'node:module';
import {
  ParseError,
  getCountries,
  isSupportedCountry,
  parsePhoneNumberWithError,
  validatePhoneNumberLength,
  type CountryCode,
  type PhoneNumber,
} from 'libphonenumber-js/max';
import { PhoneNumber as CorePhoneNumber, type MetadataJson } from 'libphonenumber-js/core';
import maxMetadata from 'libphonenumber-js/metadata.max.json';

const require = createRequire(import.meta.url);
export const LIBPHONENUMBER_VERSION: string = (require('libphonenumber-js/package.json') as { version: string })
  .version;

export const phoneTypes = [
  'mobile',
  'fixed_line',
  'fixed_line_or_mobile',
  'toll_free',
  'premium_rate',
  'shared_cost',
  'voip',
  'personal_number',
  'pager',
  'uan',
  'voicemail',
  'unknown',
] as const;
export type PhoneType = (typeof phoneTypes)[number];

export const invalidReasons = [
  'not_a_number',
  'invalid_country',
  'too_short',
  'too_long',
  'invalid_length',
  'invalid_for_region',
] as const;
export type InvalidReason = (typeof invalidReasons)[number];

export interface NumberingPlanAnswer {
  e164: string | null;
  international: string | null;
  national: string | null;
  rfc3966: string | null;
  countryCallingCode: string | null;
  nationalNumber: string | null;
  extension: string | null;
  region: string | null;
  nonGeographic: boolean;
  possibleRegions: string[];
  type: PhoneType;
  isPossible: boolean;
  isValid: boolean;
  invalidReason: InvalidReason | null;
}

/** Region codes libphonenumber-js has metadata for (ISO 3166-1 alpha-2 plus AC, TA, XK). */
export function isKnownRegion(code: string): boolean {
  return /^[A-Z]{2}$/.test(code) && isSupportedCountry(code);
}

export function knownRegions(): string[] {
  return getCountries();
}

/** True when the text carries its own country calling code (leading "+", ASCII or full-width). */
export function hasPlus(value: string): boolean {
  return /^[\s]*[+\uFF0B]/.test(value);
}

const metadata = maxMetadata as MetadataJson;
// The core constructor accepts (region or calling code, national number, metadata) at run time;
// its published type only names the E.164 form.
const NumberForRegion = CorePhoneNumber as unknown as new (
  region: string,
  nationalNumber: string,
  metadata: MetadataJson,
) => PhoneNumber;

function regionsForCallingCode(callingCode: string): string[] {
  const byCode = (metadata as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes;
  return (byCode[callingCode] ?? []).filter((r) => r !== '001');
}

function lengthReason(e164: string): InvalidReason | null {
  const r = validatePhoneNumberLength(e164);
  return r ? (r.toLowerCase() as InvalidReason) : null;
}

function parseErrorReason(err: unknown): InvalidReason {
  if (err instanceof ParseError) {
    const m = err.message.toLowerCase();
    if ((invalidReasons as readonly string[]).includes(m)) return m as InvalidReason;
  }
  return 'not_a_number';
}

function snakeType(t: string | undefined): PhoneType {
  if (!t) return 'unknown';
  const s = t.toLowerCase();
  return (phoneTypes as readonly string[]).includes(s) ? (s as PhoneType) : 'unknown';
}

/**
 * Regions sharing the number's calling code for which the national number is valid; when it is
 * valid for none of them, the regions whose possible lengths admit it (the candidates).
 */
function possibleRegionsOf(phone: PhoneNumber): string[] {
  if (phone.isNonGeographic()) return [];
  const regions = regionsForCallingCode(phone.countryCallingCode);
  const valid = regions.filter((r) => {
    try {
      return new NumberForRegion(r, phone.nationalNumber, metadata).isValid();
    } catch {
      return false;
    }
  });
  if (valid.length > 0) return valid;
  try {
    return new NumberForRegion(phone.countryCallingCode, phone.nationalNumber, metadata).getPossibleCountries();
  } catch {
    return [];
  }
}

const NOTHING: Omit<NumberingPlanAnswer, 'invalidReason'> = {
  e164: null,
  international: null,
  national: null,
  rfc3966: null,
  countryCallingCode: null,
  nationalNumber: null,
  extension: null,
  region: null,
  nonGeographic: false,
  possibleRegions: [],
  type: 'unknown',
  isPossible: false,
  isValid: false,
};

/**
 * Reads one phone number. A text that is not a phone number at all is an answer too
 * ("not a number"), never an exception: the caller already checked types and lengths.
 */
export function readNumber(value: string, defaultRegion: string | undefined): NumberingPlanAnswer {
  let phone: PhoneNumber;
  try {
    phone = parsePhoneNumberWithError(value, {
      ...(defaultRegion ? { defaultCountry: defaultRegion as CountryCode } : {}),
      extract: false,
    });
  } catch (err) {
    return { ...NOTHING, invalidReason: parseErrorReason(err) };
  }

  const isPossible = phone.isPossible();
  const isValid = phone.isValid();
  const nonGeographic = phone.isNonGeographic();
  let invalidReason: InvalidReason | null = null;
  if (!isValid) {
    // Length first (what validatePhoneNumberLength says), otherwise the digits match no range
    // the numbering plan of this calling code allocates.
    invalidReason = lengthReason(phone.number) ?? 'invalid_for_region';
  }

  return {
    e164: phone.number,
    international: phone.format('INTERNATIONAL'),
    national: phone.format('NATIONAL'),
    rfc3966: phone.format('RFC3966'),
    countryCallingCode: phone.countryCallingCode,
    nationalNumber: phone.nationalNumber,
    extension: phone.ext ?? null,
    region: nonGeographic ? null : (phone.country ?? null),
    nonGeographic,
    possibleRegions: possibleRegionsOf(phone),
    type: isValid ? snakeType(phone.getType()) : 'unknown',
    isPossible,
    isValid,
    invalidReason,
  };
}
