// A contract with every key an operation has (but `wrapper`), and the
// layer over a service with `Clone` requests and a classified error.

use std::task::{Context, Poll};

use herta::tower::ContractLayer;
use herta::{DeclaredContract, Failure, Outcome, Runtime};
use tower_layer::Layer;
use tower_service::Service;

herta::resources! {
    pub UPSTREAM: "upstream" = 4;
}

/// Calls the upstream.
#[herta::contract(
    effect = Idempotent,
    resources(UPSTREAM = 1, "sockets" = 2),
    admission = Wait,
    retry(on = [Transient, Throttled], max = 4, backoff(base = "10ms", cap = "1s")),
    timeout = "2s",
    serialize_by(user, scope = "users", show_key = true),
    name = "call_upstream",
    max_wait = "1s",
    deadline = "10s",
)]
pub struct CallUpstream;

#[derive(Clone)]
struct Request {
    user: u64,
}

#[derive(Clone)]
struct Inner;

impl Service<Request> for Inner {
    type Response = u16;
    type Error = Failure<String>;
    type Future = std::future::Ready<Result<u16, Failure<String>>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request) -> Self::Future {
        std::future::ready(Ok(200))
    }
}

fn ready<S: Service<Request> + Clone + Send + 'static>(_: &S) {}

fn main() {
    assert_eq!(CallUpstream::NAME, "call_upstream");
    assert_eq!(<CallUpstream as DeclaredContract>::CONTRACT.max_attempts(), 4);
    let rt = Runtime::builder()
        .resource(UPSTREAM)
        .resource(herta::Resource::new("sockets", 8))
        .build()
        .unwrap();
    let layer = ContractLayer::<CallUpstream>::bind_keyed(&rt, |r: &Request| r.user)
        .unwrap()
        .classify_response(|status: &u16| (*status == 503).then_some(Outcome::Transient));
    ready(&layer.layer(Inner));
}
