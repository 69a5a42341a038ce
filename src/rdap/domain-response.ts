// An RDAP domain object (RFC 9083 §5.3) reduced to what the product reports. Only these fields
// leave the module: links, notices, remarks and contact entities are dropped, so neither the
// server's URLs nor registrant personal data can reach a client. Fields that are malformed are
// reported as null, never guessed.

export interface RdapDomainData {
  handle: string | null;
  ldhName: string;
  registrar: { name: string | null; ianaId: string | null } | null;
  events: { registration: string | null; expiration: string | null; lastChanged: string | null };
  status: string[];
  nameservers: string[];
  secureDNS: { delegationSigned: boolean | null };
  source: 'rdap';
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const hostName = (v: unknown): string | null => str(v)?.toLowerCase().replace(/\.$/, '') ?? null;

function isoDate(v: unknown): string | null {
  const s = str(v);
  if (!s) return null;
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

/** jCard (RFC 7095): ["vcard", [["fn", {}, "text", "Example Registrar, Inc."], …]]. */
function vcardName(entity: Json): string | null {
  const card = arr(entity.vcardArray);
  for (const prop of arr(card[1])) {
    const p = arr(prop);
    if (p[0] === 'fn') return str(p[3]);
  }
  return null;
}

function registrarOf(domain: Json): RdapDomainData['registrar'] {
  const entity = arr(domain.entities).find((e) => isObject(e) && arr(e.roles).includes('registrar'));
  if (!isObject(entity)) return null;
  const ianaId = arr(entity.publicIds)
    .filter(isObject)
    .find((p) => typeof p.type === 'string' && p.type.toLowerCase() === 'iana registrar id');
  return { name: vcardName(entity), ianaId: ianaId ? str(ianaId.identifier) : null };
}

function eventsOf(domain: Json): RdapDomainData['events'] {
  const out: RdapDomainData['events'] = { registration: null, expiration: null, lastChanged: null };
  for (const e of arr(domain.events)) {
    if (!isObject(e)) continue;
    const date = isoDate(e.eventDate);
    if (e.eventAction === 'registration') out.registration ??= date;
    else if (e.eventAction === 'expiration') out.expiration ??= date;
    else if (e.eventAction === 'last changed') out.lastChanged ??= date;
  }
  return out;
}

/**
 * The product's view of an RDAP domain reply for `asked`; null when the body is not a domain
 * object for that name (another object class, another name).
 */
export function parseDomainResponse(body: unknown, asked: string): RdapDomainData | null {
  if (!isObject(body)) return null;
  if (body.objectClassName !== undefined && body.objectClassName !== 'domain') return null;
  const ldh = hostName(body.ldhName);
  const want = asked.toLowerCase().replace(/\.$/, '');
  if (ldh !== null && ldh !== want) return null;
  const secure = isObject(body.secureDNS) ? body.secureDNS : null;
  return {
    handle: str(body.handle),
    ldhName: ldh ?? want,
    registrar: registrarOf(body),
    events: eventsOf(body),
    status: arr(body.status)
      .filter((s): s is string => typeof s === 'string')
      .map((s) => s.toLowerCase()),
    nameservers: [
      ...new Set(
        arr(body.nameservers)
          .map((n) => (isObject(n) ? hostName(n.ldhName) : null))
          .filter((n): n is string => n !== null),
      ),
    ],
    secureDNS: { delegationSigned: typeof secure?.delegationSigned === 'boolean' ? secure.delegationSigned : null },
    source: 'rdap',
  };
}
