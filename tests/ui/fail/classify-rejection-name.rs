#[derive(Debug, resil::Classify)]
pub enum ApiError {
    Timeout,
    Refused,
}

fn main() {}
