-- Indexes for `floe audit query` (Store.AuditQuery): records by request id,
-- principal, action (exact or prefix), resource prefix and time. Action and
-- resource are compared in the "C" collation (byte order), so that a prefix
-- is a range of the index whatever the database's default collation.
CREATE INDEX audit_events_by_request ON audit_events (request_id);
CREATE INDEX audit_events_by_principal ON audit_events (principal, seq);
CREATE INDEX audit_events_by_action ON audit_events ((action COLLATE "C"), seq);
CREATE INDEX audit_events_by_resource ON audit_events ((resource COLLATE "C"), seq);
CREATE INDEX audit_events_by_time ON audit_events (time);
