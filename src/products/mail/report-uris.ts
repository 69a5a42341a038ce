// Reporting URIs of DMARC (rua/ruf, RFC 7489 §6.2) and TLS-RPT (rua, RFC 8460 §3): scheme and the
// destination domain that receives the reports.
export interface ReportUri {
  uri: string;
  scheme: string;
  /** mailto: the address's domain; http(s): the host. Null when the URI does not parse. */
  destination: string | null;
}

/** A URI with a control character (a line break the record kept, say) has no destination. */
const CONTROL = /[\x00-\x1f\x7f]/;

/**
 * Linear in the value: every regex here is anchored at one end or is a single character class.
 * (The host used to be cut with .replace(/[?#].*$/, ''): "." stops at a line break, so each "?"
 * of a run scanned to the next one and a 60 KB rua cost seconds on the lane's main thread.)
 */
export function parseReportUris(value: string | undefined): ReportUri[] {
  if (!value) return [];
  return value
    .split(',')
    .map((s) => s.trim().replace(/![0-9]+[kmgt]?$/i, ''))
    .filter((s) => s.length > 0)
    .map((uri) => {
      const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1]?.toLowerCase() ?? '';
      let destination: string | null = null;
      if (CONTROL.test(uri)) return { uri, scheme, destination };
      if (scheme === 'mailto') {
        const at = uri.lastIndexOf('@');
        const rest = at > 0 ? uri.slice(at + 1) : '';
        const cut = rest.search(/[?#]/);
        const host = cut < 0 ? rest : rest.slice(0, cut);
        destination = /^[a-z0-9._-]+\.[a-z0-9-]+$/i.test(host)
          ? decodeURIComponent(host).toLowerCase().replace(/\.$/, '')
          : null;
      } else if (scheme === 'https' || scheme === 'http') {
        try {
          destination = new URL(uri).hostname.toLowerCase() || null;
        } catch {
          destination = null;
        }
      }
      return { uri, scheme, destination };
    });
}
