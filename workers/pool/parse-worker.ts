// The piscina worker: each named export is a pool task (selected with run(payload, { name })).
export { assessWebEvidence, parseCertificate, parseSpf } from './parse-tasks.ts';
