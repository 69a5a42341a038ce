// The scan's check names, on their own: the check list (../checks/index.ts) needs them in every
// lane, and the planner (which loads the Public Suffix List through ./names.ts) is not needed there.
export const SCAN_CHECKS = {
  dns: 'scan.dns',
  wildcard: 'scan.wildcard',
  web: 'scan.web',
  mail: 'scan.mail',
  domain: 'scan.domain',
  tcpProbe: 'scan.tcp_probe',
  tlsProtocols: 'scan.tls_protocols',
  axfr: 'scan.axfr',
  wordlist: 'scan.wordlist',
  wellKnown: 'scan.well_known',
} as const;
