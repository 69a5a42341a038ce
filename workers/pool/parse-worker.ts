// The piscina worker: each named export is a pool task (selected with run(payload, { name })).
export { assessWebEvidence, parseCertificate, parseSpf } from './parse-tasks.ts';
export { mailSpfEvaluate, mailDmarcEvaluate, mailMtaStsTxt, mailMtaStsPolicy, mailDkimKey, mailCertificateChain } from '../../src/products/mail/pool-entry.ts';
