"""Floe's errors arrive in PyIceberg as the exceptions its users catch."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)

SCHEMA = pa.schema([pa.field("x", pa.int64())])


def test_missing_table(catalog: RestCatalog, unique: str) -> None:
    ns = (f"err_missing_{unique}",)
    catalog.create_namespace(ns)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(ns + ("nope",))
    assert not catalog.table_exists(ns + ("nope",))
    with pytest.raises(NoSuchTableError):
        catalog.drop_table(ns + ("nope",))
    catalog.drop_namespace(ns)


def test_missing_namespace(catalog: RestCatalog, unique: str) -> None:
    ns = (f"err_nons_{unique}",)
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties(ns)
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_tables(ns)
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_table(ns + ("t",), schema=SCHEMA)
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace(ns)
    assert not catalog.namespace_exists(ns)


def test_existing_namespace(catalog: RestCatalog, unique: str) -> None:
    ns = (f"err_dup_{unique}",)
    catalog.create_namespace(ns, {"first": "yes"})
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace(ns, {"second": "yes"})
    props = catalog.load_namespace_properties(ns)
    assert props.get("first") == "yes" and "second" not in props
    catalog.drop_namespace(ns)


def test_existing_table(catalog: RestCatalog, unique: str) -> None:
    ns = (f"err_duptbl_{unique}",)
    catalog.create_namespace(ns)
    catalog.create_table(ns + ("t",), schema=SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table(ns + ("t",), schema=SCHEMA)
    catalog.drop_table(ns + ("t",))
    catalog.drop_namespace(ns)


def test_drop_non_empty_namespace(catalog: RestCatalog, unique: str) -> None:
    ns = (f"err_nonempty_{unique}",)
    catalog.create_namespace(ns)
    catalog.create_table(ns + ("t",), schema=SCHEMA)
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace(ns)
    assert catalog.namespace_exists(ns)
    assert catalog.list_tables(ns) == [ns + ("t",)]

    # a child namespace also keeps its parent from being dropped
    catalog.drop_table(ns + ("t",))
    catalog.create_namespace(ns + ("child",))
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace(ns)
    catalog.drop_namespace(ns + ("child",))
    catalog.drop_namespace(ns)
    assert not catalog.namespace_exists(ns)
