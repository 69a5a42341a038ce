// The lab's address plan. Everything the lab serves lives on loopback; the service under test is
// allowed to reach LAB_ALLOW only, so refusals are proven with loopback addresses OUTSIDE it (a
// regressed guard would connect to this machine, never to anything beyond it).
//
//   127.0.0.1          DNS and RDAP labs
//   127.0.1.0/24       mail lab hosts (SMTP, MTA-STS)
//   127.0.2.0/24       web lab hosts (HTTP, HTTPS)
//   127.0.3.0/24+      scan lab hosts (the generated zones' web hosts: 127.0.4.1–250)
//   127.0.6.0/24       change-detection lab (a zone served in two states)
//   127.1.0.0/16+      generated zones (scale tests)
//   127.200.0.0/16     outside LAB_ALLOW: listeners there count connections, which must stay 0
export const LAB_ALLOW = '127.0.0.0/10';
/**
 * The lab's zones live under `.test` (RFC 6761), a special-use TLD the service refuses by default:
 * a service pointed at the lab lists it in ALLOW_SPECIAL_USE_DOMAINS, as it lists LAB_ALLOW in
 * ALLOW_PRIVATE_TARGETS. (github.io, the provider stand-in, is an ordinary public suffix.)
 */
export const LAB_SPECIAL_USE = 'test';
export const LAB_REFUSED_NET = '127.200.0.0/16';
export const LAB_REFUSED_ADDRESS = '127.200.0.1';

export const LAB_BLOCKS = {
  mail: '127.0.1',
  web: '127.0.2',
  scan: '127.0.3',
  changes: '127.0.6',
} as const;

/** The n-th host address of a lab block (1..254). */
export function labHost(block: keyof typeof LAB_BLOCKS, n: number): string {
  if (!Number.isInteger(n) || n < 1 || n > 254) throw new Error(`lab host number out of range: ${n}`);
  return `${LAB_BLOCKS[block]}.${n}`;
}
