// sequence() must behave as the route's handlers did when Express dispatched them one by one.
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { sequence } from '../../src/http/sequence.ts';

function appWith(handlers: RequestHandler[], after?: RequestHandler) {
  const app = express();
  app.post('/x', sequence(handlers));
  if (after) app.post('/x', after);
  app.use(((err, _req, res, _next) => {
    res.status(500).json({ error: err instanceof Error ? err.message : String(err) });
  }) as ErrorRequestHandler);
  return app;
}

const mark =
  (trail: string[], name: string): RequestHandler =>
  (_req, _res, next) => {
    trail.push(name);
    next();
  };

describe('sequence', () => {
  it('runs the handlers in order, sync and async, until one answers', async () => {
    const trail: string[] = [];
    const app = appWith([
      mark(trail, 'a'),
      async (_req, _res, next) => {
        await new Promise((r) => setTimeout(r, 5));
        trail.push('b');
        next();
      },
      (_req, res) => {
        trail.push('c');
        res.json({ trail });
      },
      mark(trail, 'never'),
    ]);
    const r = await request(app).post('/x');
    expect(r.status).toBe(200);
    expect(r.body.trail).toEqual(['a', 'b', 'c']);
  });

  it('sends a thrown error, a rejected promise and next(err) to the error handler, skipping the rest', async () => {
    for (const failing of [
      (() => {
        throw new Error('thrown');
      }) as RequestHandler,
      (async () => {
        throw new Error('rejected');
      }) as RequestHandler,
      ((_req, _res, next) => next(new Error('passed'))) as RequestHandler,
    ]) {
      const trail: string[] = [];
      const r = await request(appWith([mark(trail, 'a'), failing, mark(trail, 'after')])).post('/x');
      expect(r.status).toBe(500);
      expect(['thrown', 'rejected', 'passed']).toContain(r.body.error);
      expect(trail).toEqual(['a']);
    }
  });

  it('turns a promise rejected without a reason into an error, as Express does', async () => {
    const r = await request(appWith([() => Promise.reject(undefined)])).post('/x');
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('Rejected promise');
  });

  it("passes next('route') and the end of the chain on to the following route", async () => {
    const skip = await request(
      appWith([(_req, _res, next) => next('route'), (_req, res) => res.json({ here: 'skipped' })], (_req, res) => {
        res.json({ here: 'next route' });
      }),
    ).post('/x');
    expect(skip.body.here).toBe('next route');
    const trail: string[] = [];
    const through = await request(
      appWith([mark(trail, 'a'), mark(trail, 'b')], (_req, res) => {
        res.json({ trail });
      }),
    ).post('/x');
    expect(through.body.trail).toEqual(['a', 'b']);
  });
});
