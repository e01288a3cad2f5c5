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

#[derive(Debug, resil::Classify)]
pub enum ApiError {
    Throttled,
    #[classify(kind = "BadInput")]
    Invalid(String),
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for ApiError {
    fn from(r: resil::Rejection) -> Self {
        ApiError::Rejected(r)
    }
}

fn is_throttled(e: &ApiError) -> bool {
    matches!(e, ApiError::Throttled)
}

fn is_invalid(e: &ApiError) -> bool {
    matches!(e, ApiError::Invalid(_))
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[resil::circuit_breaker(name = "pass-classified", record = is_throttled, ignore = is_invalid, record_result = is_zero)]
fn call(n: u32) -> Result<u32, ApiError> {
    Ok(n)
}

fn main() {
    assert_eq!(call(1).unwrap(), 1);
    assert_eq!(<ApiError as resil::Classify>::KINDS, ["Throttled", "BadInput", "Rejected"]);
}
