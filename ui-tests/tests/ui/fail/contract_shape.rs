// Rule 16: `#[herta::contract]` goes on a unit struct without generics.

#[herta::contract(effect = Idempotent)]
struct WithFields {
    url: String,
}

#[herta::contract(effect = Idempotent)]
struct Generic<T>(std::marker::PhantomData<T>);

#[herta::contract(effect = Idempotent)]
fn not_a_struct() {}

fn main() {}
