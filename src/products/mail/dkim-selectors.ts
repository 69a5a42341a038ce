// DKIM selectors cannot be listed (RFC 6376 publishes keys at <selector>._domainkey.<domain> and
// nothing enumerates them), so the dkim lane probes this documented list, plus the selectors that
// hosted-mail providers publish under fixed names, inferred from the domain's MX hosts and SPF
// includes. A selector outside the list is never seen: "no selector found" is not "no DKIM".
export const COMMON_SELECTORS = [
  'default',
  'dkim',
  'mail',
  'email',
  'smtp',
  'mx',
  'key1',
  'key2',
  'dkim1',
  'dkim2',
  's1',
  's2',
  'selector1',
  'selector2',
  'google',
  'k1',
  'k2',
  'k3',
  'sig1',
  'fm1',
  'fm2',
  'fm3',
  'zmail',
  'mandrill',
  'pm',
  'protonmail',
  'hs1',
  'hs2',
  'mailjet',
  's1024',
  's2048',
] as const;

export interface Provider {
  name: string;
  /** MX host or SPF include suffixes that reveal the provider. */
  suffixes: string[];
  selectors: string[];
}

export const PROVIDERS: readonly Provider[] = [
  {
    name: 'google_workspace',
    suffixes: ['google.com', 'googlemail.com', '_spf.google.com'],
    selectors: ['google', '20230601', '20210112', '20161025'],
  },
  {
    name: 'microsoft_365',
    suffixes: ['mail.protection.outlook.com', 'spf.protection.outlook.com'],
    selectors: ['selector1', 'selector2'],
  },
  { name: 'sendgrid', suffixes: ['sendgrid.net'], selectors: ['s1', 's2', 'smtpapi'] },
  {
    name: 'mailchimp',
    suffixes: ['servers.mcsv.net', 'spf.mandrillapp.com', 'mandrillapp.com'],
    selectors: ['k1', 'k2', 'k3', 'mandrill'],
  },
  { name: 'mailgun', suffixes: ['mailgun.org'], selectors: ['mx', 'smtp', 'k1', 'krs', 'pic'] },
  { name: 'zoho', suffixes: ['zoho.com', 'zoho.eu', 'zohomail.com'], selectors: ['zmail', 'zoho'] },
  { name: 'fastmail', suffixes: ['messagingengine.com'], selectors: ['fm1', 'fm2', 'fm3'] },
  { name: 'proton', suffixes: ['protonmail.ch', 'proton.me'], selectors: ['protonmail', 'protonmail2', 'protonmail3'] },
  { name: 'postmark', suffixes: ['mtasv.net'], selectors: ['pm'] },
  { name: 'icloud', suffixes: ['icloud.com', 'me.com'], selectors: ['sig1'] },
  { name: 'mailjet', suffixes: ['mailjet.com'], selectors: ['mailjet'] },
  { name: 'hubspot', suffixes: ['hubspotemail.net'], selectors: ['hs1', 'hs2'] },
  { name: 'yandex', suffixes: ['yandex.net', 'yandex.ru'], selectors: ['mail'] },
];

export const MAX_SELECTORS = 40;

const matches = (host: string, suffix: string) => host === suffix || host.endsWith(`.${suffix}`);

/** The selectors to probe, each with why: "common" or the provider it was inferred from. */
export function selectorsFor(mxHosts: string[], spfIncludes: string[]): Array<{ selector: string; source: string }> {
  const out = new Map<string, string>();
  for (const p of PROVIDERS) {
    const via = [...mxHosts.map((h) => ['mx', h] as const), ...spfIncludes.map((h) => ['spf', h] as const)].find(
      ([, h]) => p.suffixes.some((s) => matches(h, s)),
    );
    if (via) for (const s of p.selectors) if (!out.has(s)) out.set(s, `${via[0]}:${p.name}`);
  }
  for (const s of COMMON_SELECTORS) if (!out.has(s)) out.set(s, 'common');
  return [...out].slice(0, MAX_SELECTORS).map(([selector, source]) => ({ selector, source }));
}
