"""variantlib's side of the differential test of wheel variants (tests/tests/e2e/variantlib.rs).

Reads a JSON list of cases on stdin and prints, for each, what variantlib (the reference
implementation of PEP 825, from scripts/variantlib-setup) makes of it:

    in:  [{"name": str, "file": str (a variants.json, as text),
           "supported": [[namespace, feature, [value, ...]], ...]   (most preferred first),
           "feature_priorities": {ns: [feature, ...]},               (optional)
           "property_priorities": {ns: {feature: [value, ...]}}}]   (optional)
    out: [{"name": str, "valid": bool, "error": str | null, "order": [label, ...] | null}]

The order is variantlib.api.get_variants_by_priority's, with two stand-ins and nothing else
changed: the provider plugins (which would probe this machine) report `supported`, and the
user's variantlib configuration gives `feature_priorities` and `property_priorities` (the role
of a file's `default-priorities.feature` and `.property` in the earlier drafts wheelgate reads).
Static namespaces (`providers.<ns>.static-properties`) take their values from the file, as in
variantlib. The null variant variantlib adds to every list is left out when the file has none.
"""

import json
import sys
from types import SimpleNamespace

import variantlib.api as api
from variantlib.models.provider import ProviderConfig, VariantFeatureConfig
from variantlib.variants_json import VariantsJson


def fake_loader(supported):
    class Loader:
        """PluginLoader with the plugins' answers given: the same choice of which providers to
        ask (filter_plugins, optional ones off) and the file's static properties for the rest."""

        def __init__(self, variant_info, filter_plugins=None, enable_optional_plugins=False, **_):
            self.info = variant_info
            self.filter = filter_plugins
            self.optional = enable_optional_plugins

        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False

        def get_supported_configs(self):
            asked = [
                ns
                for ns, provider in self.info.providers.items()
                if (self.filter is None or ns in self.filter)
                and (provider.requires or provider.build_requires)
                and (not provider.optional or self.optional is True)
            ]
            configs = {
                ns: ProviderConfig(
                    namespace=ns,
                    configs=[
                        VariantFeatureConfig(name=name, values=list(values), multi_value=False)
                        for name, values in provider.static_properties.items()
                    ],
                )
                for ns, provider in self.info.providers.items()
                if ns not in asked and provider.static_properties
            }
            for ns in asked:
                features = [
                    VariantFeatureConfig(name=feature, values=list(values), multi_value=False)
                    for (namespace, feature, values) in supported
                    if namespace == ns and values
                ]
                if features:
                    configs[ns] = ProviderConfig(namespace=ns, configs=features)
            return configs

    return Loader


def run(case):
    try:
        data = json.loads(case["file"])
        variants_json = VariantsJson(data)
    except Exception as error:  # noqa: BLE001 - any refusal is the answer
        return {"valid": False, "error": f"{type(error).__name__}: {error}", "order": None}
    api.PluginLoader = fake_loader(case.get("supported", []))
    config = SimpleNamespace(
        namespace_priorities=[],
        feature_priorities=case.get("feature_priorities") or {},
        property_priorities=case.get("property_priorities") or {},
    )
    api.VariantConfiguration.get_config = classmethod(lambda cls: config)
    try:
        ordered = api.get_variants_by_priority(variants_json=variants_json)
    except Exception as error:  # noqa: BLE001
        return {"valid": True, "error": f"ordering: {type(error).__name__}: {error}", "order": None}
    has_null = "null" in data.get("variants", {})
    order = [v.label for v in ordered if has_null or v.label != "null"]
    return {"valid": True, "error": None, "order": order}


def main():
    cases = json.load(sys.stdin)
    json.dump([{"name": case["name"], **run(case)} for case in cases], sys.stdout)


if __name__ == "__main__":
    main()
