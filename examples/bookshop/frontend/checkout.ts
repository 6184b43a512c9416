// Checkout form: posts the cart to the API and shows the result.

export interface BasketItem {
  isbn: string;
  quantity: number;
  unit_price: string;
}

export interface OrderResponse {
  order_id: string;
  status: "paid" | "cancelled";
}

export async function submitOrder(email: string, items: BasketItem[], country = "GB"): Promise<OrderResponse> {
  const response = await fetch("/orders", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email, items, country }),
  });
  if (response.status === 400) {
    const body = await response.json();
    throw new Error(`the basket was rejected: ${body.error}`);
  }
  if (!response.ok) {
    throw new Error(`checkout failed with HTTP ${response.status}; please try again`);
  }
  return (await response.json()) as OrderResponse;
}

export function validateEmail(email: string): boolean {
  return /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email);
}
