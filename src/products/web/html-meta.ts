// What a page's HTML says about its own security, read with parse5 (the WHATWG HTML parsing
// algorithm, as browsers parse): <meta http-equiv="content-security-policy">, <meta
// name="referrer"> and the <script> elements (for Subresource Integrity); and the hosts the page
// links to (<a href>), which a deep scan follows. Runs in the pool.
import { parse } from 'parse5';

export interface PageMeta {
  /** The <meta> CSP values parsed: at most MAX_META_CSP, each at most MAX_META_CSP_CHARS. */
  csp: string[];
  /** <meta> CSP values left unparsed: past the count cap or longer than the size cap. */
  cspSkipped: { count: number; longest: number };
  referrer: string[];
  scripts: Array<{ src: string; integrity: string | null; crossorigin: string | null }>;
  /** <script> elements without src (inline scripts). */
  inlineScripts: number;
  /** Host names of absolute http(s) links (<a href>), first seen first; a deep scan follows them. */
  linkedHosts: string[];
  /** More distinct linked hosts than MAX_LINKED_HOSTS were on the page. */
  linkedHostsTruncated: boolean;
}

interface Node {
  nodeName: string;
  attrs?: Array<{ name: string; value: string }>;
  childNodes?: Node[];
  content?: Node;
}

const MAX_SCRIPTS = 200;
export const MAX_LINKED_HOSTS = 500;
/**
 * Caps of the <meta> CSP policies (docs/products/web.md): the header's policies fit in the 64 KiB
 * response head; the body (1 MiB) could otherwise carry thousands of policies or one of a megabyte,
 * all of it copied into the projection. Real pages carry one policy of a few hundred bytes.
 */
export const MAX_META_CSP = 16;
export const MAX_META_CSP_CHARS = 64 * 1024;

function linkHost(href: string): string | null {
  if (!/^https?:\/\//i.test(href.trim())) return null; // relative links stay on the page's host
  try {
    return new URL(href.trim()).hostname.toLowerCase().replace(/\.$/, '') || null;
  } catch {
    return null;
  }
}

export function readPageMeta(html: string): PageMeta {
  const out: PageMeta = {
    csp: [],
    cspSkipped: { count: 0, longest: 0 },
    referrer: [],
    scripts: [],
    inlineScripts: 0,
    linkedHosts: [],
    linkedHostsTruncated: false,
  };
  const hosts = new Set<string>();
  const stack: Node[] = [parse(html) as unknown as Node];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const attr = (n: string) => node.attrs?.find((a) => a.name === n)?.value ?? null;
    if (node.nodeName === 'meta') {
      const equiv = attr('http-equiv')?.trim().toLowerCase();
      const content = attr('content');
      if (equiv === 'content-security-policy' && content) {
        if (out.csp.length < MAX_META_CSP && content.length <= MAX_META_CSP_CHARS) out.csp.push(content);
        else {
          out.cspSkipped.count++;
          out.cspSkipped.longest = Math.max(out.cspSkipped.longest, content.length);
        }
      } else if (!equiv && attr('name')?.trim().toLowerCase() === 'referrer' && content) out.referrer = [content];
    } else if (node.nodeName === 'script') {
      const src = attr('src');
      if (src === null) out.inlineScripts++;
      else if (out.scripts.length < MAX_SCRIPTS)
        out.scripts.push({ src: src.trim(), integrity: attr('integrity'), crossorigin: attr('crossorigin') });
    } else if (node.nodeName === 'a') {
      const host = linkHost(attr('href') ?? '');
      if (host && !hosts.has(host)) {
        if (hosts.size < MAX_LINKED_HOSTS) hosts.add(host);
        else out.linkedHostsTruncated = true;
      }
    }
    if (node.content) stack.push(node.content);
    // Children in reverse so the stack visits them in document order.
    for (let i = (node.childNodes?.length ?? 0) - 1; i >= 0; i--) stack.push(node.childNodes![i]!);
  }
  out.linkedHosts = [...hosts];
  return out;
}
