// What a page's HTML says about its own security, read with parse5 (the WHATWG HTML parsing
// algorithm, as browsers parse): <meta http-equiv="content-security-policy">, <meta
// name="referrer"> and the <script> elements (for Subresource Integrity). Runs in the pool.
import { parse } from 'parse5';

export interface PageMeta {
  csp: string[];
  referrer: string[];
  scripts: Array<{ src: string; integrity: string | null; crossorigin: string | null }>;
  /** <script> elements without src (inline scripts). */
  inlineScripts: number;
}

interface Node {
  nodeName: string;
  attrs?: Array<{ name: string; value: string }>;
  childNodes?: Node[];
  content?: Node;
}

const MAX_SCRIPTS = 200;

export function readPageMeta(html: string): PageMeta {
  const out: PageMeta = { csp: [], referrer: [], scripts: [], inlineScripts: 0 };
  const stack: Node[] = [parse(html) as unknown as Node];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const attr = (n: string) => node.attrs?.find((a) => a.name === n)?.value ?? null;
    if (node.nodeName === 'meta') {
      const equiv = attr('http-equiv')?.trim().toLowerCase();
      const content = attr('content');
      if (equiv === 'content-security-policy' && content) out.csp.push(content);
      else if (!equiv && attr('name')?.trim().toLowerCase() === 'referrer' && content) out.referrer = [content];
    } else if (node.nodeName === 'script') {
      const src = attr('src');
      if (src === null) out.inlineScripts++;
      else if (out.scripts.length < MAX_SCRIPTS) out.scripts.push({ src: src.trim(), integrity: attr('integrity'), crossorigin: attr('crossorigin') });
    }
    if (node.content) stack.push(node.content);
    // Children in reverse so the stack visits them in document order.
    for (let i = (node.childNodes?.length ?? 0) - 1; i >= 0; i--) stack.push(node.childNodes![i]!);
  }
  return out;
}
