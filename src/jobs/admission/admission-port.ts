// How admission talks back to whoever asked, without knowing a transport: the web role writes
// headers and replies on its Express response (src/routes/product-routes.ts), the monitor
// scheduler keeps nothing but the outcome. The port is a pair of plain functions over a target
// chosen by the caller (a response, a run), so a request costs no closure.
export interface AdmissionPort<T> {
  /** A header every later reply of this request carries (RateLimit, RateLimit-Policy). */
  header(target: T, name: string, value: string): void;
  /** The reply: its status, its JSON text, and whether it replays a committed one. */
  send(target: T, status: number, text: string, replayed: boolean): void;
}

/** A port that shows nothing: the caller reads admission's result (the monitor scheduler). */
export const silentPort: AdmissionPort<unknown> = {
  header() {},
  send() {},
};
