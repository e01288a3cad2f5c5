use resil::Rejection;

#[derive(Debug, PartialEq, resil::Classify)]
enum DbError {
    ConnectionRefused,
    NotFound(u32),
    Rejected { why: String },
}

impl From<Rejection> for DbError {
    fn from(r: Rejection) -> Self {
        DbError::Rejected { why: r.to_string() }
    }
}

#[resil::circuit_breaker(name = "smoke-free")]
fn free(x: u32) -> Result<u32, DbError> {
    if x == 0 {
        return Err(DbError::NotFound(0));
    }
    Ok(x * 2)
}

fn degraded(x: u32, e: resil::Error<DbError>) -> Result<u32, DbError> {
    let _ = e;
    Ok(x + 1000)
}

#[resil::circuit_breaker(name = "smoke-fb", fallback = degraded)]
fn with_fallback(x: u32) -> Result<u32, DbError> {
    Err(DbError::ConnectionRefused).map(|()| x)
}

struct Svc {
    n: u32,
}
impl Svc {
    #[resil::circuit_breaker(name = "smoke-method", fallback = Self::fb)]
    async fn get(&mut self, sku: String) -> Result<u32, DbError> {
        self.n += 1;
        if sku.is_empty() {
            return Err(DbError::ConnectionRefused);
        }
        Ok(self.n)
    }
    async fn fb(&mut self, _sku: String) -> Result<u32, DbError> {
        Ok(99)
    }
}

#[test]
fn smoke() {
    assert_eq!(free(2), Ok(4));
    assert_eq!(free(0), Err(DbError::NotFound(0)));
    assert_eq!(with_fallback(1), Ok(1001));
    assert_eq!(
        <DbError as resil::Classify>::KINDS,
        ["ConnectionRefused", "NotFound", "Rejected"]
    );
    let mut s = Svc { n: 0 };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(s.get("a".into())), Ok(1));
    assert_eq!(rt.block_on(s.get("".into())), Ok(99));
    let decls = resil_config::declarations();
    assert!(
        decls.iter().any(|d| d.name() == "smoke-free"
            && d.error_kinds() == ["ConnectionRefused", "NotFound", "Rejected"]),
        "{decls:?}"
    );
}
