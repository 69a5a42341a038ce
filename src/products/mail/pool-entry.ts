// The mail pool tasks as the task registry (workers/pool/parse-tasks.ts) and the piscina worker
// see them: thin wrappers that load ./pool-tasks.ts (and mailauth behind it) on the first mail
// task a thread runs, so a pool thread that only parses certificates for another lane starts as
// fast as before.
import type * as Heavy from './pool-tasks.ts';

let loading: Promise<typeof Heavy> | undefined;
const heavy = () => (loading ??= import('./pool-tasks.ts'));
/** Loads the mail parsers and mailauth (the pool warms a replacement thread with it). */
export const loadMailPoolTasks = heavy;

export const mailSpfEvaluate = async (p: Parameters<typeof Heavy.mailSpfEvaluate>[0]) =>
  (await heavy()).mailSpfEvaluate(p);
export const mailDmarcEvaluate = async (p: Parameters<typeof Heavy.mailDmarcEvaluate>[0]) =>
  (await heavy()).mailDmarcEvaluate(p);
export const mailMtaStsTxt = async (p: Parameters<typeof Heavy.mailMtaStsTxt>[0]) => (await heavy()).mailMtaStsTxt(p);
export const mailMtaStsPolicy = async (p: Parameters<typeof Heavy.mailMtaStsPolicy>[0]) =>
  (await heavy()).mailMtaStsPolicy(p);
export const mailDkimKey = async (p: Parameters<typeof Heavy.mailDkimKey>[0]) => (await heavy()).mailDkimKey(p);
export const mailCertificateChain = async (p: Parameters<typeof Heavy.mailCertificateChain>[0]) =>
  (await heavy()).mailCertificateChain(p);
export const mailBimiSvg = async (p: Parameters<typeof Heavy.mailBimiSvg>[0]) => (await heavy()).mailBimiSvg(p);
export const mailBimiCertificate = async (p: Parameters<typeof Heavy.mailBimiCertificate>[0]) =>
  (await heavy()).mailBimiCertificate(p);

export const mailPoolTasks = {
  mailSpfEvaluate,
  mailDmarcEvaluate,
  mailMtaStsTxt,
  mailMtaStsPolicy,
  mailDkimKey,
  mailCertificateChain,
  mailBimiSvg,
  mailBimiCertificate,
} as const;
export type MailPoolTask = keyof typeof mailPoolTasks;
