// Reporting URIs of DMARC (rua/ruf, RFC 7489 §6.2) and TLS-RPT (rua, RFC 8460 §3): scheme and the
// destination domain that receives the reports.
export interface ReportUri {
  uri: string;
  scheme: string;
  /** mailto: the address's domain; http(s): the host. Null when the URI does not parse. */
  destination: string | null;
}

export function parseReportUris(value: string | undefined): ReportUri[] {
  if (!value) return [];
  return value
    .split(',')
    .map((s) => s.trim().replace(/![0-9]+[kmgt]?$/i, ''))
    .filter((s) => s.length > 0)
    .map((uri) => {
      const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1]?.toLowerCase() ?? '';
      let destination: string | null = null;
      if (scheme === 'mailto') {
        const at = uri.lastIndexOf('@');
        const host = at > 0 ? uri.slice(at + 1).replace(/[?#].*$/, '') : '';
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
