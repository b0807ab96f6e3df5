//! wheelgate-selectors: probes that describe the local machine for wheelgate-resolver.
