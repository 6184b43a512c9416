// The browser cart: kept in localStorage so a reload does not empty it.

const STORAGE_KEY = "bookshop.cart.v2";

export function loadCart() {
  try {
    return JSON.parse(localStorage.getItem(STORAGE_KEY)) || { items: [] };
  } catch (err) {
    console.warn("cart storage is corrupt, starting a new cart", err);
    return { items: [] };
  }
}

export function addToCart(cart, isbn, quantity = 1) {
  const existing = cart.items.find((item) => item.isbn === isbn);
  if (existing) {
    existing.quantity += quantity;
  } else {
    cart.items.push({ isbn, quantity });
  }
  localStorage.setItem(STORAGE_KEY, JSON.stringify(cart));
  return cart;
}

export function removeFromCart(cart, isbn) {
  cart.items = cart.items.filter((item) => item.isbn !== isbn);
  localStorage.setItem(STORAGE_KEY, JSON.stringify(cart));
  return cart;
}

export function renderCart(cart, prices, element) {
  const rows = cart.items.map((item) => {
    const price = prices[item.isbn] ?? 0;
    return `<tr><td>${item.isbn}</td><td>${item.quantity}</td><td>${(price * item.quantity).toFixed(2)}</td></tr>`;
  });
  element.innerHTML = `<table>${rows.join("")}</table>`;
}
