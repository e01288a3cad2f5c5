#[derive(Debug, resil::Classify)]
pub struct ApiError {
    code: u16,
}

fn main() {}
