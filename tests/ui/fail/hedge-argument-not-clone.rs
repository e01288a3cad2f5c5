#[derive(Debug)]
pub enum DbError {
    Unavailable,
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for DbError {
    fn from(r: resil::Rejection) -> Self {
        DbError::Rejected(r)
    }
}

pub struct Request {
    pub body: Vec<u8>,
}

#[resil::hedge(name = "upload")]
async fn upload(request: Request) -> Result<usize, DbError> {
    Ok(request.body.len())
}

fn main() {}
