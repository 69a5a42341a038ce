// A connection never attempted because it waited too long for a place at its address in our own
// queue (./address-slots.ts SlotWaitExpired) is our congestion, never the target's silence
// (DESIGN.md, "Congestion is ours, silence is the target's"): it comes back as the failure kind
// `congested` and is noted as a local failure of the work it ran in (./local-failures.ts), so a
// lane gives its task back for another attempt instead of recording a timeout or a failed
// connection of the target.
import { SlotWaitExpired } from './address-slots.ts';
import { OUTBOUND_NOT_ATTEMPTED, noteLocalFailure } from './local-failures.ts';
import { OutboundFetchError } from './outbound-errors.ts';

export { OUTBOUND_NOT_ATTEMPTED };

/** What a failed wait for a place becomes: `congested` for an expired wait, the error itself otherwise. */
export function slotFailure(err: unknown): unknown {
  if (!(err instanceof SlotWaitExpired)) return err;
  noteLocalFailure(OUTBOUND_NOT_ATTEMPTED);
  return new OutboundFetchError('congested', err.message, { cause: err });
}
