// MAC notation parsing and the bits of the first octet (IEEE 802 I/G, U/L, SLAP quadrant).

const NOTATIONS: RegExp[] = [
  /^[0-9a-f]{12}$/i, // 001a2b3c4d5e
  /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i, // 00:1a:2b:3c:4d:5e
  /^[0-9a-f]{2}(-[0-9a-f]{2}){5}$/i, // 00-1a-2b-3c-4d-5e
  /^[0-9a-f]{4}(\.[0-9a-f]{4}){2}$/i, // 001a.2b3c.4d5e (Cisco)
  /^[0-9a-f]{6}[-:][0-9a-f]{6}$/i, // 001a2b-3c4d5e
];

export function parseMac(value: string): string | null {
  const v = value.trim();
  if (!NOTATIONS.some((re) => re.test(v))) return null;
  return v.replace(/[^0-9a-f]/gi, '').toUpperCase();
}

export function formatMac(hex12: string): string {
  return hex12.match(/../g)!.join(':');
}

export type SlapQuadrant = 'ELI' | 'SAI' | 'AAI' | 'reserved';

export interface MacBits {
  isMulticast: boolean;
  isLocallyAdministered: boolean;
  /** IEEE 802c Structured Local Address Plan quadrant, for locally administered unicast only. */
  slapQuadrant: SlapQuadrant | null;
}

export function macBits(hex12: string): MacBits {
  const first = parseInt(hex12.slice(0, 2), 16);
  const isMulticast = (first & 0x01) === 1;
  const isLocallyAdministered = (first & 0x02) === 2;
  let slapQuadrant: SlapQuadrant | null = null;
  if (isLocallyAdministered && !isMulticast) {
    // Bits 0x08 and 0x04 select the 802c quadrant: second hex digit A = ELI, 6 = SAI, 2 = AAI, E = reserved.
    const yz = (first >> 2) & 0x03;
    slapQuadrant = yz === 0b10 ? 'ELI' : yz === 0b01 ? 'SAI' : yz === 0b00 ? 'AAI' : 'reserved';
  }
  return { isMulticast, isLocallyAdministered, slapQuadrant };
}
