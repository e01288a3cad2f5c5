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

pub struct Inventory {
    hits: u64,
}

impl Inventory {
    #[resil::circuit_breaker(name = "pass-ref", fallback = Self::degraded)]
    fn by_ref(&self, sku: u64) -> Result<u64, DbError> {
        Ok(sku + self.hits)
    }

    fn degraded(&self, sku: u64, _error: resil::Error<DbError>) -> Result<u64, DbError> {
        Ok(sku)
    }

    #[resil::circuit_breaker(name = "pass-mut")]
    fn by_mut(&mut self, sku: u64) -> Result<u64, DbError> {
        self.hits += 1;
        Ok(sku)
    }

    #[resil::circuit_breaker(name = "pass-arc", fallback = Self::arc_degraded)]
    async fn by_arc(self: Arc<Self>, sku: u64) -> Result<u64, DbError> {
        Ok(sku + self.hits)
    }

    async fn arc_degraded(self: Arc<Self>, sku: u64) -> Result<u64, DbError> {
        Ok(sku + self.hits)
    }

    #[resil::circuit_breaker(name = "pass-value")]
    fn by_value(self) -> Result<u64, DbError> {
        Ok(self.hits)
    }
}

fn main() {
    let mut inventory = Inventory { hits: 0 };
    assert_eq!(inventory.by_mut(1), Ok(1));
    assert_eq!(inventory.by_ref(1), Ok(2));
    let _future = Arc::new(Inventory { hits: 0 }).by_arc(1);
    assert_eq!(inventory.by_value(), Ok(1));
}
