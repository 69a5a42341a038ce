// The task fields a lane entry carries (src/queue/carried-task.ts): what encodeCarried writes is read
// back whole, and anything else (absent, not JSON, another shape) reads as none, so the runner
// takes the road through the task row instead of running on a guess.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CARRIED_FIELD, decodeCarried, encodeCarried, type CarriedTask } from '../../src/queue/carried-task.ts';

const sample: CarriedTask = {
  workspaceId: 7,
  objectKey: 'h1.gen.test',
  check: 'scan.web',
  productLane: 'web',
  distance: 2,
  params: '{"approvedScope":"gen.test"}',
  target: 'gen.test',
};

describe('carried task fields', () => {
  it('reads back what was written, params text unchanged', () => {
    expect(decodeCarried({ task: '1', job: '2', [CARRIED_FIELD]: encodeCarried(sample) })).toEqual(sample);
    expect(decodeCarried({ [CARRIED_FIELD]: encodeCarried({ ...sample, params: null }) })).toEqual({
      ...sample,
      params: null,
    });
  });

  it('an entry without them, or with anything else, carries none', () => {
    expect(decodeCarried({ task: '1', job: '2' })).toBeNull();
    for (const bad of [
      'not json',
      '{}',
      '[]',
      JSON.stringify([7, 'k', 'c', 'p', 2, null]),
      JSON.stringify(['7', 'k', 'c', 'p', 2, null, 't']),
      JSON.stringify([7, 'k', 'c', 'p', 1.5, null, 't']),
      JSON.stringify([7, 'k', 'c', 'p', 2, { a: 1 }, 't']),
      JSON.stringify([7, 'k', 3, 'p', 2, null, 't']),
    ])
      expect(decodeCarried({ [CARRIED_FIELD]: bad })).toBeNull();
  });

  it('any string either decodes to a whole task or to none, never throws', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 2000 }), (s) => {
        const v = decodeCarried({ [CARRIED_FIELD]: s });
        if (v !== null) expect(encodeCarried(v)).toBe(JSON.stringify(JSON.parse(s)));
      }),
    );
  });
});
