#[automatically_derived]
impl<T: Clone> ::my_resil::__private::Classify for DbError<T> {
    const KINDS: &'static [&'static str] = &["ConnectionRefused", "NotFound", "Closed"];
    fn kind(&self) -> &'static str {
        match *self {
            Self::Refused { .. } => "ConnectionRefused",
            Self::NotFound { .. } => "NotFound",
            Self::Closed { .. } => "Closed",
        }
    }
}
