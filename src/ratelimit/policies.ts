// Rate policies of CONTRACT §5 and their per-application overrides (admin `limits set`).
import { z } from 'zod';
import type { RateClass } from '../contract/lanes.ts';

export interface RatePolicy {
  /** Name shown in the RateLimit / RateLimit-Policy headers. */
  name: string;
  limit: number;
  windowSeconds: number;
  burst: number;
  /** Which error a refusal of this policy produces. */
  scope: 'application' | 'product';
}

export const productLimitDefaults: Record<RateClass, { perMinute: number; perHour: number }> = {
  sync_lookup: { perMinute: 600, perHour: 20_000 },
  async_lookup: { perMinute: 120, perHour: 2_000 },
  scan: { perMinute: 10, perHour: 100 },
};

export const appLimitDefault = { perMinute: 1200, burst: 100 };

export const rateOverridesSchema = z
  .object({
    app: z
      .object({ perMinute: z.number().int().min(1), burst: z.number().int().min(1) })
      .partial()
      .optional(),
    products: z
      .record(
        z.string(),
        z
          .object({
            perMinute: z.number().int().min(1),
            perHour: z.number().int().min(1),
          })
          .partial(),
      )
      .optional(),
  })
  .strict();

export type RateOverrides = z.infer<typeof rateOverridesSchema>;

export function parseOverrides(raw: unknown): RateOverrides {
  if (raw == null) return {};
  const value = typeof raw === 'string' ? JSON.parse(raw) : raw;
  const parsed = rateOverridesSchema.safeParse(value);
  return parsed.success ? parsed.data : {};
}

export function appPolicy(o: RateOverrides): RatePolicy {
  return {
    name: 'app',
    limit: o.app?.perMinute ?? appLimitDefault.perMinute,
    windowSeconds: 60,
    burst: o.app?.burst ?? appLimitDefault.burst,
    scope: 'application',
  };
}

/** Minute and hour policies of one product. A product's whole quota may be used in a burst. */
export function productPolicies(o: RateOverrides, productId: string, rateClass: RateClass): RatePolicy[] {
  const d = productLimitDefaults[rateClass];
  const own = o.products?.[productId];
  const perMinute = own?.perMinute ?? d.perMinute;
  const perHour = own?.perHour ?? d.perHour;
  // lookup.mac.v1 → mac, scan.recursive.v1 → scan: the name shown in the RateLimit headers.
  const short = productId.startsWith('scan.') ? 'scan' : productId.replace(/^lookup\./, '').replace(/\.v\d+$/, '');
  return [
    { name: `${short}-minute`, limit: perMinute, windowSeconds: 60, burst: perMinute, scope: 'product' },
    { name: `${short}-hour`, limit: perHour, windowSeconds: 3600, burst: perHour, scope: 'product' },
  ];
}
