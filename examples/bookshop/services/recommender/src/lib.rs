//! "Readers also bought": recommendations from co-purchase vectors.

use std::collections::HashMap;

/// Cosine similarity of two sparse purchase vectors (customer id -> copies).
pub fn cosine_similarity(a: &HashMap<u64, f32>, b: &HashMap<u64, f32>) -> f32 {
    let dot: f32 = a.iter().filter_map(|(k, x)| b.get(k).map(|y| x * y)).sum();
    let norm = |v: &HashMap<u64, f32>| v.values().map(|x| x * x).sum::<f32>().sqrt();
    let denom = norm(a) * norm(b);
    if denom == 0.0 { 0.0 } else { dot / denom }
}

/// The `k` titles most similar to `isbn`, best first.
pub fn recommend(isbn: &str, purchases: &HashMap<String, HashMap<u64, f32>>, k: usize) -> Vec<(String, f32)> {
    let Some(target) = purchases.get(isbn) else { return Vec::new() };
    let mut scored: Vec<(String, f32)> = purchases
        .iter()
        .filter(|(other, _)| other.as_str() != isbn)
        .map(|(other, v)| (other.clone(), cosine_similarity(target, v)))
        .collect();
    scored.sort_by(|x, y| y.1.partial_cmp(&x.1).unwrap());
    scored.truncate(k);
    scored
}
