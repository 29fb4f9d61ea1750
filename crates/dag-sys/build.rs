//! Links the DAG API: the vendor's libdag (feature `libdag`) or tracekit's software card
//! (feature `dag-emulator`, compiled here with `cc`). Without either, the bindings
//! compile but nothing provides the functions, so only a crate that never calls them
//! links. The bindings themselves are committed (`src/bindings.rs`, see `regen.sh`):
//! building needs neither libclang nor the vendor SDK.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DAG_ROOT");
    let libdag = std::env::var_os("CARGO_FEATURE_LIBDAG").is_some();
    let emulator = std::env::var_os("CARGO_FEATURE_DAG_EMULATOR").is_some();
    if libdag && emulator {
        panic!(
            "dag-sys: features `libdag` and `dag-emulator` exclude each other (both define the DAG API)"
        );
    }
    if libdag {
        let root = std::env::var("DAG_ROOT").unwrap_or_else(|_| "/usr/local".to_string());
        println!("cargo:rustc-link-search=native={root}/lib");
        println!("cargo:rustc-link-lib=dag");
    }
    #[cfg(feature = "dag-emulator")]
    if emulator {
        println!("cargo:rerun-if-changed=emulator/dagemu.c");
        println!("cargo:rerun-if-changed=emulator/dagemu.h");
        println!("cargo:rerun-if-changed=include/dagapi_min.h");
        cc::Build::new()
            .file("emulator/dagemu.c")
            .include("include")
            .flag_if_supported("-std=gnu11")
            .warnings(true)
            .extra_warnings(true)
            .warnings_into_errors(true)
            .compile("dagemu");
        println!("cargo:rustc-link-lib=pthread");
    }
}
