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

#[resil::circuit_breaker(name = "pass-patterns", fallback = degraded)]
fn area((w, h): (u32, u32), _: bool) -> std::io::Result<u32> {
    Ok(w * h)
}

fn degraded(_size: (u32, u32), _flag: bool) -> std::io::Result<u32> {
    Ok(0)
}

#[resil::circuit_breaker(name = "pass-question-mark")]
fn parse(text: &str) -> Result<u32, DbError> {
    let n: u32 = text.parse().map_err(|_| DbError::Unavailable)?;
    if n == 0 {
        return Err(DbError::Unavailable);
    }
    Ok(n)
}

fn main() {
    assert_eq!(area((2, 3), true).unwrap(), 6);
    assert_eq!(parse("7"), Ok(7));
}
