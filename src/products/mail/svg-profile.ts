// A BIMI logo against SVG Tiny Portable/Secure (draft-svg-tiny-ps-abrotman §2), the profile
// mailbox providers require: the root <svg> in the SVG namespace with version="1.2" and
// baseProfile="tiny-ps", no x or y on it, a <title>; only SVG Tiny 1.2 elements, none of those the
// profile removes (scripts and event handlers, links, images, multimedia, animation,
// foreignObject); no external reference of any kind (an href that is not a fragment, a url() that
// is not one); and, for BIMI, a square viewBox.
//
// Pure, run in the parse pool on bytes the bimi lane fetched. Target text is hostile: the input is
// at most 64 KiB (a gzip body is inflated to at most that), the parser is saxes (a streaming,
// non-validating XML parser that never expands entities and never fetches anything) with its
// first error thrown, and every count is capped (depth 32, 5,000 elements, 256 attributes per
// element, 20 violations kept), so the time is linear in the input: saxes' namespace lookup walks
// the open-element stack, which the depth cap bounds.
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { SaxesParser } from 'saxes';

export const SVG_MAX_BYTES = 64 * 1024;
/** BIMI's advice for a logo (draft-brand-indicators-for-message-identification, "Large files"). */
export const SVG_ADVISED_BYTES = 32 * 1024;
const MAX_DEPTH = 32;
const MAX_ELEMENTS = 5_000;
const MAX_ATTRIBUTES = 256;
const MAX_VIOLATIONS = 20;

const SVG_NS = 'http://www.w3.org/2000/svg';
const XLINK_NS = 'http://www.w3.org/1999/xlink';

/** The elements of SVG Tiny 1.2 (Appendix "Element Index"). */
const TINY_12 = new Set([
  'a',
  'animate',
  'animateColor',
  'animateMotion',
  'animateTransform',
  'animation',
  'audio',
  'circle',
  'defs',
  'desc',
  'discard',
  'ellipse',
  'font',
  'font-face',
  'font-face-src',
  'font-face-uri',
  'foreignObject',
  'g',
  'glyph',
  'handler',
  'hkern',
  'image',
  'line',
  'linearGradient',
  'listener',
  'metadata',
  'missing-glyph',
  'mpath',
  'path',
  'polygon',
  'polyline',
  'prefetch',
  'radialGradient',
  'rect',
  'script',
  'set',
  'solidColor',
  'stop',
  'svg',
  'switch',
  'tbreak',
  'text',
  'textArea',
  'title',
  'tspan',
  'use',
  'video',
]);

/** Tiny 1.2 elements the PS profile removes: code, links, external media, animation, foreign content. */
const REMOVED = new Set([
  'a',
  'animate',
  'animateColor',
  'animateMotion',
  'animateTransform',
  'animation',
  'audio',
  'discard',
  'font-face-uri',
  'foreignObject',
  'handler',
  'image',
  'listener',
  'prefetch',
  'script',
  'set',
  'video',
]);

export interface SvgProfile {
  /** No violation: the logo meets SVG Tiny PS as checked here. */
  valid: boolean;
  violations: string[];
  /** More violations than kept. */
  moreViolations: boolean;
  advice: string[];
  title: string | null;
  viewBox: number[] | null;
  square: boolean | null;
  /** Bytes of the SVG itself (after inflating a gzip body). */
  bytes: number;
  compressed: boolean;
  /** SHA-256 of the SVG bytes (hex): what a mark certificate's logotype hash is compared with. */
  sha256: string | null;
}

class Stop extends Error {}

/** An attribute value that reaches outside the document: url(...) not pointing at a fragment. */
function externalUrl(value: string): boolean {
  let at = value.indexOf('url(');
  while (at >= 0) {
    let i = at + 4;
    while (i < value.length && (value[i] === ' ' || value[i] === '"' || value[i] === "'")) i++;
    if (value[i] !== '#') return true;
    at = value.indexOf('url(', i);
  }
  return false;
}

/**
 * Inflates a gzip body (SVGZ, which BIMI allows) within the cap. Returns the SVG bytes, or the
 * violation that stops the check.
 */
export function svgBytes(raw: Buffer): { bytes: Buffer; compressed: boolean } | { error: string; compressed: boolean } {
  const compressed = raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b;
  if (!compressed) return { bytes: raw, compressed };
  try {
    return { bytes: gunzipSync(raw, { maxOutputLength: SVG_MAX_BYTES }), compressed };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return {
      compressed,
      error:
        code === 'ERR_BUFFER_TOO_LARGE'
          ? `the gzip body inflates past ${SVG_MAX_BYTES} bytes`
          : 'the gzip body does not inflate',
    };
  }
}

export function checkSvgProfile(input: { base64: string }): SvgProfile {
  const raw = Buffer.from(input.base64, 'base64');
  const out: SvgProfile = {
    valid: false,
    violations: [],
    moreViolations: false,
    advice: [],
    title: null,
    viewBox: null,
    square: null,
    bytes: 0,
    compressed: false,
    sha256: null,
  };
  const violation = (v: string) => {
    if (out.violations.includes(v)) return;
    if (out.violations.length < MAX_VIOLATIONS) out.violations.push(v);
    else out.moreViolations = true;
  };
  const inflated = svgBytes(raw);
  out.compressed = inflated.compressed;
  if ('error' in inflated) {
    violation(inflated.error);
    return out;
  }
  const bytes = inflated.bytes;
  out.bytes = bytes.length;
  out.sha256 = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length > SVG_MAX_BYTES) {
    violation(`larger than ${SVG_MAX_BYTES} bytes`);
    return out;
  }
  if (bytes.length > SVG_ADVISED_BYTES)
    out.advice.push(`${bytes.length} bytes: BIMI advises at most ${SVG_ADVISED_BYTES}`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    violation('not UTF-8 text');
    return out;
  }

  const parser = new SaxesParser({ xmlns: true, position: false });
  let depth = 0;
  let elements = 0;
  let roots = 0;
  /** Collecting the root's <title> text. */
  let inTitle = false;
  let title = '';
  let titleSeen = false;
  parser.on('error', (err) => {
    violation(`not well-formed XML (${err.message.slice(0, 120)})`);
    throw new Stop();
  });
  parser.on('doctype', (doctype) => {
    // Entity declarations (an internal subset) are refused: saxes never expands them, renderers might.
    if (doctype.includes('[')) violation('a DOCTYPE with an internal subset (entity declarations)');
    else out.advice.push('a DOCTYPE declaration (not needed, and ignored)');
  });
  parser.on('processinginstruction', (pi) => {
    if (pi.target.toLowerCase() === 'xml-stylesheet')
      violation('an xml-stylesheet processing instruction (external style)');
  });
  parser.on('opentag', (tag) => {
    depth++;
    elements++;
    if (depth > MAX_DEPTH) {
      violation(`elements nested deeper than ${MAX_DEPTH}`);
      throw new Stop();
    }
    if (elements > MAX_ELEMENTS) {
      violation(`more than ${MAX_ELEMENTS} elements`);
      throw new Stop();
    }
    const attributes = Object.values(tag.attributes);
    if (attributes.length > MAX_ATTRIBUTES) {
      violation(`an element with more than ${MAX_ATTRIBUTES} attributes`);
      throw new Stop();
    }
    const local = tag.local ?? tag.name;
    const svg = tag.uri === SVG_NS;
    if (depth === 1) {
      roots++;
      if (!svg || local !== 'svg') violation(`the root element is <${tag.name}>, not <svg> in the SVG namespace`);
      const attr = (n: string) => attributes.find((a) => a.uri === '' && a.local === n)?.value;
      if (attr('version') !== '1.2')
        violation(`the root's version is ${JSON.stringify(attr('version') ?? null)}, not "1.2"`);
      if (attr('baseProfile') !== 'tiny-ps')
        violation(`the root's baseProfile is ${JSON.stringify(attr('baseProfile') ?? null)}, not "tiny-ps"`);
      if (attr('x') !== undefined || attr('y') !== undefined) violation('the root <svg> has an x or y attribute');
      const viewBox = attr('viewBox');
      if (viewBox !== undefined) {
        const n = viewBox
          .trim()
          .split(/[\s,]+/)
          .slice(0, 5)
          .map(Number);
        if (n.length === 4 && n.every(Number.isFinite)) {
          out.viewBox = n;
          out.square = n[2] === n[3] && n[2]! > 0;
          if (!out.square) violation(`the viewBox ${n.join(' ')} is not square`);
        } else violation('the viewBox is not four numbers');
      } else out.advice.push('no viewBox: whether the logo is square is unknown');
    }
    if (svg) {
      if (!TINY_12.has(local)) violation(`<${local}> is not an SVG Tiny 1.2 element`);
      else if (REMOVED.has(local)) violation(`<${local}> is not allowed in SVG Tiny PS`);
      if (depth === 2 && local === 'title' && !titleSeen) {
        titleSeen = true;
        inTitle = true;
      }
    }
    for (const a of attributes) {
      const name = a.local.toLowerCase();
      if (a.uri !== 'http://www.w3.org/2000/xmlns/' && a.prefix !== 'xmlns' && name.startsWith('on'))
        violation(`an event handler attribute (${a.name} on <${local}>)`);
      if (name === 'href' && (a.uri === XLINK_NS || a.uri === '' || a.prefix !== '') && !a.value.trim().startsWith('#'))
        violation(`an external reference (${a.name}="${a.value.slice(0, 80)}" on <${local}>)`);
      if (externalUrl(a.value)) violation(`an external url() in ${a.name} on <${local}>`);
    }
    if (tag.isSelfClosing) depth--;
  });
  parser.on('text', (t) => {
    if (inTitle && title.length < 512) title += t.slice(0, 512);
  });
  parser.on('cdata', (t) => {
    if (inTitle && title.length < 512) title += t.slice(0, 512);
  });
  parser.on('closetag', (tag) => {
    if (tag.isSelfClosing) return;
    if (depth === 2 && inTitle) inTitle = false;
    depth--;
  });
  try {
    parser.write(text).close();
  } catch (err) {
    if (!(err instanceof Stop))
      violation(`not well-formed XML (${err instanceof Error ? err.message.slice(0, 120) : 'error'})`);
  }
  if (roots > 1) violation('more than one root element');
  out.title = titleSeen ? title.replace(/\s+/g, ' ').trim().slice(0, 200) : null;
  if (!out.title) violation(titleSeen ? 'the <title> is empty' : 'no <title> child of the root <svg>');
  out.valid = out.violations.length === 0;
  return out;
}
