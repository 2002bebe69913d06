"""Validates the service's OpenAPI document with openapi-spec-validator; prints one JSON object.

Usage: openapi_check.py; env WEBPILOT_BASE (service base URL). Prints {"valid": true, "version": ..., "paths": n}
or exits non-zero with the validator's error.
"""

import json
import os
import sys
import urllib.request

from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError


def main():
    with urllib.request.urlopen(f"{os.environ['WEBPILOT_BASE']}/openapi.json", timeout=30) as r:
        doc = json.load(r)
    try:
        validate(doc)
    except OpenAPIValidationError as e:
        print(f"invalid OpenAPI document: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"valid": True, "version": doc.get("openapi"), "paths": len(doc.get("paths", {}))}))


if __name__ == "__main__":
    main()
