// The piscina worker: each named export is a pool task (selected with run(payload, { name })).
export { parseCertificate } from '../../src/net/certificate.ts';
export {
  mailCertificateChain,
  mailDkimKey,
  mailDmarcEvaluate,
  mailMtaStsPolicy,
  mailMtaStsTxt,
  mailSpfEvaluate,
} from '../../src/products/mail/pool-entry.ts';
export { assessWebEvidence } from '../../src/products/web/pool-entry.ts';
