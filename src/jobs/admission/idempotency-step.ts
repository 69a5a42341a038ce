// Steps 4 and 8 of admission over src/idempotency/: the Idempotency-Key must be there, then what
// its lease means for this request (execute once, replay, conflict, in progress), and the commit
// of the reply. The decisions live in src/idempotency/idempotency.ts; this file applies them to
// admission's state and answers through the caller's port.
import { ApiError } from '../../contract/errors.ts';
import { requestFingerprint } from '../../idempotency/fingerprint.ts';
import type { Decision, Idempotency, ReplyStore } from '../../idempotency/idempotency.ts';
import type { StoredReply } from '../../idempotency/lease.ts';
import { admissionOutcomes } from '../../metrics.ts';
import type { AdmissionState } from './admission-state.ts';
import type { AdmissionPort } from './admission-port.ts';

/** Step 4: the key must be there and well-formed (the caller kept it only when it was). */
export function requireIdempotencyKey(st: AdmissionState): void {
  st.step = 'idempotency_key';
  if (!st.idempotencyKey) throw new ApiError('idempotency_key_required');
}

/**
 * Step 8: execute (st.claim then holds the lease), or the replay to answer; conflicts and waits
 * throw. Mostly the admission script's answer settles it with no promise and no round trip.
 */
export function decideIdempotency(
  idempotency: Idempotency,
  st: AdmissionState,
  store: ReplyStore,
  method: string,
  path: string,
): Decision | Promise<Decision> {
  st.step = 'idempotency';
  // The lease step 3 claimed passes to the decision, which hands it back only to execute.
  const held = st.claim;
  st.claim = undefined;
  const now = idempotency.decideAtOnce(st.lease, store, held);
  if (now) return keep(st, now);
  const p = st.principal!;
  const fingerprint = st.lease?.fingerprint ?? requestFingerprint(method, path, st.rawBody);
  const who = { applicationId: p.applicationId, apiKeyId: p.keyId, key: st.idempotencyKey! };
  return idempotency.decide(who, fingerprint, st.lease, store, held).then((d) => keep(st, d));
}

function keep(st: AdmissionState, d: Decision): Decision {
  if (d.kind === 'execute') st.claim = d.claim;
  return d;
}

export function sendReplay<T>(target: T, port: AdmissionPort<T>, reply: StoredReply): void {
  admissionOutcomes.inc({ code: 'replayed' });
  port.send(target, reply.status, reply.body, true);
}

/** A reply body already serialised (an inline envelope, bounded as text: kit/inline-output.ts). */
export class SerializedBody {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** Keeps the reply for replay (where `store` says), ends the lease, and sends it. */
export async function commitReply<T>(
  idempotency: Idempotency | undefined,
  st: AdmissionState,
  status: number,
  body: unknown,
  store: ReplyStore,
  target: T,
  port: AdmissionPort<T>,
): Promise<void> {
  const claim = st.claim;
  const text = body instanceof SerializedBody ? body.text : JSON.stringify(body);
  if (claim && idempotency) {
    st.claim = undefined;
    if (store === 'redis') {
      // Write-behind: the reply leaves once the marker that stores it is on its way to Redis
      // (Idempotency.commitBehind says why a retry still finds it).
      admissionOutcomes.inc({ code: 'ok' });
      idempotency
        .commitBehind(claim, { status, body: text }, () => {
          try {
            port.send(target, status, text, false);
          } catch (err) {
            st.log.error({ err }, 'could not send the reply');
          }
        })
        .then(
          (held) => {
            if (!held) st.log.warn('idempotency lease had expired before the request finished');
          },
          (err: unknown) => {
            st.log.warn({ err: { message: (err as Error).message } }, 'could not store the reply for replay');
          },
        );
      return;
    }
    const out = await idempotency.commit(claim, { status, body: text }, store);
    if (out.replayed) return sendReplay(target, port, out.reply);
  }
  admissionOutcomes.inc({ code: 'ok' });
  port.send(target, status, text, false);
}

/** After an async product's job transaction met the unique key: the reply committed first. */
export async function answerCommittedElsewhere<T>(
  idempotency: Idempotency,
  st: AdmissionState,
  target: T,
  port: AdmissionPort<T>,
): Promise<void> {
  const claim = st.claim!;
  try {
    sendReplay(target, port, await idempotency.committedElsewhere(claim));
  } finally {
    await endClaim(idempotency, st, true);
  }
}

/** Ends this request's lease: with the committed marker, or released (a failure stores nothing). */
export async function endClaim(idempotency: Idempotency, st: AdmissionState, committed: boolean): Promise<void> {
  const claim = st.claim;
  if (!claim) return;
  st.claim = undefined;
  try {
    const held = await idempotency.finish(claim, committed);
    if (!held) st.log.warn('idempotency lease had expired before the request finished');
  } catch (err) {
    // The lease expires on its own (IDEMPOTENCY_LOCK_MS); a committed reply is in MySQL anyway.
    st.log.warn({ err: { message: (err as Error).message } }, 'could not end idempotency lease');
  }
}
