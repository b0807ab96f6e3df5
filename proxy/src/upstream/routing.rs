//! Which upstream owns a project: PyTorch-built packages and the triton family only the PyTorch
//! upstream, everything else only the general upstream. File lists are never merged, so a name
//! squatted on PyPI (`torchtriton`, December 2022) can never shadow a PyTorch package.

use wheelgate_resolver::Catalog;

/// One of the two upstreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Upstream {
    /// download.pytorch.org (or a mirror of it).
    Pytorch,
    /// PyPI or a company mirror.
    General,
}

/// The upstream that owns a normalized project name.
pub fn route(catalog: &Catalog, normalized: &str) -> Upstream {
    if catalog.routes_to_pytorch(normalized) {
        Upstream::Pytorch
    } else {
        Upstream::General
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_names_never_reach_the_general_upstream() {
        let catalog = Catalog::embedded();
        for name in [
            "torch",
            "torchvision",
            "torchaudio",
            "pytorch-triton",
            "pytorch-triton-rocm",
            "fbgemm-gpu",
        ] {
            assert_eq!(route(catalog, name), Upstream::Pytorch, "{name}");
        }
        for name in ["numpy", "triton", "filelock", "torchtriton"] {
            assert_eq!(route(catalog, name), Upstream::General, "{name}");
        }
    }
}
