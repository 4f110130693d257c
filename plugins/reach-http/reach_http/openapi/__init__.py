"""OpenAPI 3.0/3.1 import: documents -> one tool per operation."""

from .loader import LoadedDocument, load_document, parse_document
from .operations import OperationSpec, Skipped, build_operations, server_url, tool_name
from .schema import OpenAPIError, SchemaBuilder

__all__ = [
    "LoadedDocument",
    "OpenAPIError",
    "OperationSpec",
    "SchemaBuilder",
    "Skipped",
    "build_operations",
    "load_document",
    "parse_document",
    "server_url",
    "tool_name",
]
