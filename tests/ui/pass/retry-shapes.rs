#[derive(Debug, PartialEq)]
pub enum DbError {
    Unavailable,
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for DbError {
    fn from(r: resil::Rejection) -> Self {
        DbError::Rejected(r)
    }
}

use std::sync::Arc;

#[derive(Clone)]
pub struct Request {
    pub body: Vec<u8>,
}

fn is_unavailable(e: &DbError) -> bool {
    matches!(e, DbError::Unavailable)
}

fn is_empty(n: &usize) -> bool {
    *n == 0
}

#[resil::retry(name = "pass-retry", retry_on = is_unavailable, retry_on_result = is_empty)]
fn upload(request: Request, mut attempts: u32, (a, b): (u8, u8)) -> Result<usize, DbError> {
    attempts += 1;
    Ok(request.body.len() + attempts as usize + usize::from(a + b))
}

pub struct Client;

impl Client {
    #[resil::retry(name = "pass-retry-ref", fallback = Self::offline)]
    async fn send(&self, path: &str, body: String) -> Result<usize, DbError> {
        Ok(path.len() + body.len())
    }

    async fn offline(&self, _path: &str, _body: String) -> Result<usize, DbError> {
        Ok(0)
    }

    #[resil::retry(name = "pass-retry-arc")]
    async fn shared(self: Arc<Self>, id: u64) -> Result<u64, DbError> {
        let me = self;
        let _ = me;
        Ok(id)
    }

    #[resil::retry(name = "pass-retry-mut")]
    fn counted(&mut self, total: &mut u32) -> Result<u32, DbError> {
        *total += 1;
        Ok(*total)
    }
}

fn main() {
    assert_eq!(upload(Request { body: vec![1] }, 0, (1, 1)), Ok(4));
    let _future = Client.send("/a", String::new());
    let _future = Arc::new(Client).shared(1);
    let mut total = 0;
    assert_eq!(Client.counted(&mut total), Ok(1));
}
