fn main() { std::process::exit(lid_host::cli::main()) }
