// Types for the parts of mailauth (CommonJS, no declarations for these files) that the mail product
// calls. Only pure functions are declared here: see ARCHITECTURE.md for the audit of what each
// one does and why none of them can reach the network (resolvers are always ours, replaying
// answers the lane already gathered).
declare module 'mailauth/lib/spf/syntax.js' {
  const syntax: {
    /** The first syntax error of the record's terms (RFC 7208 §4.6, §12), or false. */
    validateTerms(terms: string[]): string | false;
    parseMacroString(
      input: string,
      options?: { explain?: boolean; expLetters?: boolean },
    ): Array<{ literal?: string; expand?: string }>;
    normalizeTargetName(name: string): string;
    isValidTargetName(name: string): boolean;
  };
  export default syntax;
}

declare module 'mailauth/lib/dmarc/get-dmarc-record.js' {
  export type DmarcResolver = (name: string, type: string) => Promise<unknown[]>;
  export interface ParsedDmarc {
    v?: string;
    p?: string;
    sp?: string;
    np?: string;
    t?: string;
    psd?: string;
    pct?: number;
    ri?: number;
    rf?: string;
    rua?: string;
    ruf?: string;
    adkim?: string;
    aspf?: string;
    fo?: string;
    rr: string;
    [tag: string]: unknown;
  }
  export interface Discovery {
    record: ParsedDmarc | false;
    recordDomain: string | null;
    orgDomain: string | null;
    orgRecord: ParsedDmarc | false | null;
    error?: Error & { code?: string };
  }
  type RecordLookup = (name: string) => Promise<ParsedDmarc | false>;
  const getDmarcRecord: {
    createRecordLookup(resolver: DmarcResolver, opts?: { strict?: boolean }): RecordLookup;
    discoverPolicy(domain: string, lookup: RecordLookup): Promise<Discovery>;
    getPolicyTags(record: ParsedDmarc): { p: string; sp?: string; np?: string } | null;
    parseDmarcRecord(txt: string, opts?: { strict?: boolean; warnings?: Set<string> }): ParsedDmarc | null;
  };
  export default getDmarcRecord;
}

declare module 'mailauth/lib/parse-dkim-headers.js' {
  const parser: {
    parseTagList(
      value: string,
      options?: { strict?: boolean },
    ): {
      parsed: Record<string, { value: string | number }>;
      tags: Array<{ name: string; value: string }>;
      syntaxErrors: string[];
    };
  };
  export default parser;
}

declare module 'mailauth/lib/tools.js' {
  export interface DkimKey {
    publicKey: string;
    rr: string;
    modulusLength?: number;
    keyType: string;
    flags: string[];
    testing: boolean;
    warnings: string[];
  }
  const tools: {
    getPublicKey(
      type: 'DKIM',
      name: string,
      minBitLength: number,
      resolver: (name: string, type: string) => Promise<unknown[]>,
      options?: { strict?: boolean },
    ): Promise<DkimKey>;
  };
  export default tools;
}
