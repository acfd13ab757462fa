-- Custom encryption at rest (encryption.path of the graphs file): the encryption context of the
-- caller who created a run or a cron (what the module's `context` handler derived, e.g. a tenant id),
-- so that a worker executing the run, or the tick firing the cron, encrypts what it writes as that
-- caller would. JSON text rather than jsonb: jsonb parameters go through the driver's encrypting
-- serializer, and the context is what that serializer needs, not something it may seal. Null when
-- custom encryption is off or the caller had none.
alter table agent_runs add column encryption_context text;
alter table agent_crons add column encryption_context text;
