-- Data products in shares (issue 20): a share object of kind 'product'
-- names a data product of the share's warehouse (name; namespace '') and
-- shares its current output ports.

ALTER TABLE share_objects DROP CONSTRAINT share_objects_kind_check;
ALTER TABLE share_objects ADD CONSTRAINT share_objects_kind_check CHECK (kind IN ('table', 'view', 'namespace', 'product'));
