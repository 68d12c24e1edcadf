// What the layer checks of a contract and a service at compile time: a
// keyed contract needs `bind_keyed`, an unkeyed one `bind`; a retried
// contract needs `Clone` requests; the inner error must be classified.

use std::convert::Infallible;
use std::task::{Context, Poll};

use herta::tower::ContractLayer;
use herta::{Outcome, Runtime};
use tower_layer::Layer;
use tower_service::Service;

#[herta::contract(effect = Idempotent, serialize_by = user)]
struct Keyed;

#[herta::contract(effect = Idempotent)]
struct Unkeyed;

#[herta::contract(effect = Idempotent, retry(on = Transient, max = 3))]
struct Retried;

/// Not `Clone`.
struct Request(String);

#[derive(Clone)]
struct Inner;

impl Service<Request> for Inner {
    type Response = ();
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<(), std::io::Error>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request) -> Self::Future {
        std::future::ready(Ok(()))
    }
}

fn ready<S: Service<Request>>(_: &S) {}

fn main() {
    let rt = Runtime::builder().build().unwrap();
    let _ = ContractLayer::<Keyed>::bind(&rt);
    let _ = ContractLayer::<Unkeyed>::bind_keyed(&rt, |r: &Request| r.0.clone());

    let layer = ContractLayer::<Retried>::bind(&rt)
        .unwrap()
        .classify_error(|_: &std::io::Error| Outcome::Transient);
    ready(&layer.layer(Inner));

    let unclassified = ContractLayer::<Unkeyed>::bind(&rt).unwrap();
    ready(&unclassified.layer(Inner));
    let _: Option<Infallible> = None;
}
