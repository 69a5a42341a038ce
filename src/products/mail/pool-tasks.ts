// The mail product's pool tasks: CPU-bound parsing and evaluation of what the checks gathered
// (SPF tree, DMARC discovery, MTA-STS record and policy, DKIM keys, certificate chains, BIMI
// logos and mark certificates). Plain
// functions of JSON input and output. Loaded lazily through ./pool-entry.ts, which is what the
// task registry (workers/pool/parse-tasks.ts) and the piscina worker register.
import { certificateChainFacts } from '../../net/certificate-chain.ts';
import { evaluateDmarc } from './dmarc-policy.ts';
import { parseDkimKey } from './dkim-key.ts';
import { checkMarkCertificate } from './mark-certificate.ts';
import { parseMtaStsPolicy, parseMtaStsTxt } from './mta-sts-policy.ts';
import { evaluateSpf } from './spf-evaluate.ts';
import { checkSvgProfile } from './svg-profile.ts';

export const mailSpfEvaluate = evaluateSpf;
export const mailDmarcEvaluate = evaluateDmarc;
export const mailMtaStsTxt = parseMtaStsTxt;
export const mailMtaStsPolicy = parseMtaStsPolicy;
export const mailDkimKey = parseDkimKey;
export const mailCertificateChain = certificateChainFacts;
export const mailBimiSvg = checkSvgProfile;
export const mailBimiCertificate = checkMarkCertificate;
