//! The `wheelgate` binary.

fn main() {
    println!("wheelgate");
}
