#[derive(Debug, resil::Classify)]
pub enum ApiError {
    #[classify(name = "Throttled")]
    TooManyRequests,
}

fn main() {}
