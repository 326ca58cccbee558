-- Indexes for `floe audit query` (Store.AuditQuery): records by request id,
-- principal, action (exact or prefix), resource prefix and time. seq is the
-- rowid, so each index is also in seq order within a key.
CREATE INDEX audit_events_by_request ON audit_events (request_id);
CREATE INDEX audit_events_by_principal ON audit_events (principal);
CREATE INDEX audit_events_by_action ON audit_events (action);
CREATE INDEX audit_events_by_resource ON audit_events (resource);
CREATE INDEX audit_events_by_time ON audit_events (time);
