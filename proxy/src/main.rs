//! The `wheelgate` binary: the command line of [`wheelgate::cli`], which parses the arguments,
//! sets up logging, runs one subcommand, and maps its outcome to a stable exit code (see
//! [`wheelgate::cli::exit`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(wheelgate::cli::main(std::env::args_os()))
}

/// mimalloc rather than glibc's allocator: a cold page request in a fresh server allocates a few
/// megabytes of parsed page, and glibc growing its heaps for that (`sysmalloc`, page faults) was
/// a fifth of the request's CPU; with mimalloc a cold `/simple/torch/` over a real-size page
/// took about 8 ms instead of 10.6 here (median of 6 fresh servers each).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
