// The mail product's pool tasks: CPU-bound parsing and evaluation of what the checks gathered
// (SPF tree, DMARC discovery, MTA-STS record and policy, DKIM keys, certificate chains). Plain
// functions of JSON input and output, registered in workers/pool/parse-tasks.ts (the one task
// registry) and exported by name for the piscina worker (workers/pool/parse-worker.ts).
// Import the registry, not this file, to run them (./pool.ts): parse-tasks.ts must load first,
// since certificate-chain.ts uses its parseCertificate.
import { certificateChainFacts } from './certificate-chain.ts';
import { evaluateDmarc } from './dmarc-policy.ts';
import { parseDkimKey } from './dkim-key.ts';
import { parseMtaStsPolicy, parseMtaStsTxt } from './mta-sts-policy.ts';
import { evaluateSpf } from './spf-evaluate.ts';

export const mailSpfEvaluate = evaluateSpf;
export const mailDmarcEvaluate = evaluateDmarc;
export const mailMtaStsTxt = parseMtaStsTxt;
export const mailMtaStsPolicy = parseMtaStsPolicy;
export const mailDkimKey = parseDkimKey;
export const mailCertificateChain = certificateChainFacts;

export const mailPoolTasks = { mailSpfEvaluate, mailDmarcEvaluate, mailMtaStsTxt, mailMtaStsPolicy, mailDkimKey, mailCertificateChain } as const;
export type MailPoolTask = keyof typeof mailPoolTasks;
