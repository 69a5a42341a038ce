-- A name that is not an object of its own (a scan name that only its level's wildcard answers)
-- collapses into another object: its row stays as a tombstone with folded_into set, so that a
-- later write naming it lands on that object instead of recreating it, and the result, object and
-- relation reads skip it (src/jobs/output-writer.ts, src/jobs/pages-repo.ts).
ALTER TABLE objects ADD COLUMN folded_into BIGINT UNSIGNED NULL;
