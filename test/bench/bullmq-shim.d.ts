// bullmq is the dispatch benchmark's baseline only, installed by `npm run bench:dispatch`
// (npm install --no-save). It is not a project dependency: its optional platform packages leave a
// lockfile that `npm ci` rejects here. Typed loosely so the type-check never needs it installed.
declare module 'bullmq' {
  export class Queue<T = unknown> {
    constructor(...args: any[]);
    [member: string]: any;
  }
  export class Worker<T = unknown> {
    constructor(...args: any[]);
    [member: string]: any;
  }
}
declare module 'bullmq/package.json' {
  const pkg: { version: string };
  export default pkg;
}
